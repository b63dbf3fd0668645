"""Root conftest: loads the project's pytest plugins for the features and the tests."""

pytest_plugins = [
    "fixtures.acceptance",
    "fixtures.incluster",
    "fixtures.interrupts",
    "fixtures.notify",
    "fixtures.progress",
    "fixtures.release",
    "fixtures.run_record",
    "fixtures.side_by_side",
    "fixtures.testenv",
    "fixtures.test_order",
    "fixtures.timeline",
    "fixtures.trace",
    "steps.profile_steps",
    "steps.job_steps",
    "steps.preflight_steps",
    "steps.running_steps",
]
