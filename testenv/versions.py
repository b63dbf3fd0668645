"""Every pinned version of the test services, in one place.

Bumping a version here changes the cache key of the matching build, so the next
``testenv up`` rebuilds that component and nothing else.
"""

from __future__ import annotations

# Kubernetes control plane (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl), built from k8s.io/kubernetes with its staging modules pinned to v0.X.Y.
KUBERNETES = "v1.36.3"

# etcd server, built from go.etcd.io/etcd/server/v3. Same minor as the etcd client
# that Kubernetes 1.36 vendors (3.6.x).
ETCD = "v3.6.16"

# kwok (the simulated kubelet) and kwokctl (the cluster runner), sigs.k8s.io/kwok.
KWOK = "v0.8.0"

# S3 server: versitygw with its posix backend (maintained, Apache-2.0; MinIO's
# repository is source-only and unmaintained).
VERSITYGW = "v1.8.0"

# The Go release the recipes were written for; go.mod files of the pins above
# require at most this, and GOTOOLCHAIN=local forbids silent toolchain downloads.
GO_MIN = (1, 26)
