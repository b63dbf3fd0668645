"""The embedded ``local`` target: the Worker on this machine with a real Ray head."""
