"""The smoke workload: a CPU-only, seconds-long, RLinf-shaped stand-in for a GPU RLinf run.

It is *not* RLinf. It launches like RLinf's ``train_embodied_agent.py`` (``@hydra.main``,
``--config-path/--config-name`` plus overrides), prints the resolved config as indented
JSON, attaches to the running Ray head, trains a tiny numpy policy with env / rollout /
actor Ray workers, prints RLinf's embodied metric table after each step, and writes checkpoints and
TensorBoard events in RLinf's layout. The embedded local target runs it as the Worker's
run script so every runtime check (6.3-6.5, 1.1/1.2) is exercised end to end.

    python -m rlark_acceptance.smoke --config-path DIR --config-name NAME [overrides...]
"""
