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

# The real node (gpu-node-09): its kubelet is built from the same k8s.io/kubernetes module
# as the control plane (KUBERNETES); containerd v2 from its Go module; runc from Debian
# (the apt package of the machine's release, installed by testenv when missing).
CONTAINERD = "v2.4.2"
# Debian packages the real node and the Worker image need (installed only when missing).
APT_PACKAGES = ("runc", "mmdebstrap", "containernetworking-plugins", "s3fs")

# The Worker image: a Debian release by mmdebstrap plus the Python packages of the smoke
# workload and Ray. Its tag is the project's version; the content hash picks the cache entry.
WORKER_IMAGE_SUITE = "bookworm"
WORKER_IMAGE_REPO = "registry.rlark.test/rlinf-smoke"

# The trace collector (testenv/otelcol: the OpenTelemetry Collector's OTLP receiver and the
# contrib file exporter). The collector's beta modules and its stable ones (confmap, its
# providers) are released together under two version lines.
OTELCOL = "v0.165.0"
OTELCOL_STABLE = "v1.71.0"

# Kyverno Chainsaw, the declarative Kubernetes e2e tool the bench compares against. v0.2.12
# does not compile with Go 1.26 (testing.testDeps gained a method): it builds with the Go
# release it was made for, which the go command fetches from the module proxy.
CHAINSAW = "v0.2.12"
CHAINSAW_GOTOOLCHAIN = "go1.24.13"

# The Go release the recipes were written for; go.mod files of the pins above
# require at most this, and GOTOOLCHAIN=local forbids silent toolchain downloads.
GO_MIN = (1, 26)
