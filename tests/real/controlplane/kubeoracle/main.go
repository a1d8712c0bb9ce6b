// Command kubeoracle answers, for pods and quantities read from stdin (a JSON array), what
// Kubernetes v1.35.4's own code makes of them: apimachinery's Quantity (the stored string and
// Value()), the API server's create path for a pod (v1 defaulting, conversion to the internal
// type, ValidatePodCreate with the options the registry derives), and component-helpers'
// PodRequests (what the scheduler counts). It lives in the control-plane module so it builds
// from the same pinned modules (go.sum) and mostly from the Go build cache.
package main

import (
	"encoding/json"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	core "k8s.io/kubernetes/pkg/apis/core"
	k8sv1 "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/validation"
)

type request struct {
	ID       string          `json:"id"`
	Quantity json.RawMessage `json:"quantity,omitempty"`
	Pod      json.RawMessage `json:"pod,omitempty"`
}

type stored struct {
	Requests map[string]string `json:"requests"`
	Limits   map[string]string `json:"limits"`
}

type answer struct {
	ID string `json:"id"`
	// quantities
	Canonical string `json:"canonical,omitempty"`
	Value     int64  `json:"value"`
	IsInteger bool   `json:"isInteger"`
	// pods
	Errors     []string          `json:"errors,omitempty"`
	Containers []stored          `json:"containers,omitempty"`
	Requests   map[string]string `json:"requests,omitempty"`
	Counts     map[string]int64  `json:"counts,omitempty"`
	Error      string            `json:"error,omitempty"`
}

func quantity(req request) answer {
	out := answer{ID: req.ID}
	var q resource.Quantity
	if err := json.Unmarshal(req.Quantity, &q); err != nil {
		out.Error = err.Error()
		return out
	}
	out.Canonical = q.String()
	out.Value = q.Value()
	out.IsInteger = q.MilliValue()%1000 == 0 && q.Cmp(*resource.NewQuantity(q.Value(), resource.DecimalSI)) == 0
	return out
}

func resourcesOf(list corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for name, q := range list {
		out[string(name)] = q.String()
	}
	return out
}

func pod(req request) answer {
	out := answer{ID: req.ID}
	var p corev1.Pod
	if err := json.Unmarshal(req.Pod, &p); err != nil {
		out.Error = err.Error()
		return out
	}
	k8sv1.SetObjectDefaults_Pod(&p)
	var internal core.Pod
	if err := k8sv1.Convert_v1_Pod_To_core_Pod(&p, &internal, nil); err != nil {
		out.Error = err.Error()
		return out
	}
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&internal.Spec, nil, &internal.ObjectMeta, nil)
	for _, err := range validation.ValidatePodCreate(&internal, opts) {
		out.Errors = append(out.Errors, err.Error())
	}
	all := append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
	for _, c := range all {
		out.Containers = append(out.Containers, stored{
			Requests: resourcesOf(c.Resources.Requests),
			Limits:   resourcesOf(c.Resources.Limits),
		})
	}
	out.Requests = map[string]string{}
	out.Counts = map[string]int64{}
	for name, q := range resourcehelper.PodRequests(&p, resourcehelper.PodResourcesOptions{}) {
		out.Requests[string(name)] = q.String()
		out.Counts[string(name)] = q.Value()
	}
	return out
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		panic(err)
	}
	var requests []request
	if err := json.Unmarshal(raw, &requests); err != nil {
		panic(err)
	}
	answers := make([]answer, 0, len(requests))
	for _, req := range requests {
		if len(req.Pod) > 0 {
			answers = append(answers, pod(req))
		} else {
			answers = append(answers, quantity(req))
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		panic(err)
	}
}
