//go:build tools

// The control-plane commands this module builds, pinned by go.mod and go.sum.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
