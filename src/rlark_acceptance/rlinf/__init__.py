"""RLinf semantics: config composition as Hydra does it, launch scripts, placement → GPUs,
the effective values after overrides, the fingerprint of the validated settings."""
