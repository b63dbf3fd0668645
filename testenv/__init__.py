"""Real test services (Kubernetes control plane, S3 server) for rlark-acceptance."""
