// Package k8s holds no code: its test checks the Kubernetes manifests in
// this directory against the k8s.io/api types and the snowflaked binary.
// It is a module of its own so that the Kubernetes libraries, which only
// the test uses, never enter the root module's go.mod or the binaries.
package k8s
