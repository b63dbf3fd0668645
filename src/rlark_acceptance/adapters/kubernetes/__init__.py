"""The ``kubernetes`` target: any cluster from a kubeconfig."""
