"""Step definitions by subject; thin wrappers over the rlark_acceptance library."""
