#!/usr/bin/env bash
# Regenerates the deepcopy functions of apis/ and the clientset, listers and
# informers under generated/ with k8s.io/code-generator at the version of
# client-go in go.mod. `go run pkg@version` builds each generator outside
# this module, so go.mod never requires code-generator. Run it from
# anywhere: `go generate ./examples/crd` or `bash examples/crd/hack/update-codegen.sh`.
set -o errexit -o nounset -o pipefail

CODEGEN=k8s.io/code-generator/cmd
VERSION=v0.37.2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
PKG=github.com/boltinformer/boltinformer/examples/crd
HEADER="${HERE}/hack/boilerplate.go.txt"

cd "${HERE}"
rm -rf generated apis/example/v1alpha1/zz_generated.deepcopy.go

go run "${CODEGEN}/deepcopy-gen@${VERSION}" \
    --go-header-file "${HEADER}" \
    --output-file zz_generated.deepcopy.go \
    "${PKG}/apis/example/v1alpha1"

go run "${CODEGEN}/client-gen@${VERSION}" \
    --go-header-file "${HEADER}" \
    --output-dir generated/clientset \
    --output-pkg "${PKG}/generated/clientset" \
    --clientset-name versioned \
    --input-base "${PKG}/apis" \
    --input example/v1alpha1

go run "${CODEGEN}/lister-gen@${VERSION}" \
    --go-header-file "${HEADER}" \
    --output-dir generated/listers \
    --output-pkg "${PKG}/generated/listers" \
    "${PKG}/apis/example/v1alpha1"

go run "${CODEGEN}/informer-gen@${VERSION}" \
    --go-header-file "${HEADER}" \
    --output-dir generated/informers \
    --output-pkg "${PKG}/generated/informers" \
    --versioned-clientset-package "${PKG}/generated/clientset/versioned" \
    --listers-package "${PKG}/generated/listers" \
    "${PKG}/apis/example/v1alpha1"
