// Command kube-apiserver is the Kubernetes API server, built from
// k8s.io/kubernetes at the version pinned in ../go.mod, for
// internal/testcluster. It is not part of the boltinformer library.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
