//go:build tools

// The kubelet and kube-proxy this module builds for the real-node tier (tests/node), pinned
// by go.mod and go.sum to the same Kubernetes release as the control plane
// (tests/real/controlplane).
package kubelet

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
