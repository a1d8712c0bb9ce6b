// Command etcd is the etcd server at the version kube-apiserver v1.35 is built against,
// for the real-control-plane test tier (tests/real).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
