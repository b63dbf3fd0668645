"""The acceptance run: the pre-flight, then Step 6 on a target, and what it records."""
