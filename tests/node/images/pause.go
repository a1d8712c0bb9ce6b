// Command pause holds a pod's sandbox (or stands in for a workload) until it is told to stop:
// the images of the real-node tier (tests/node) are made on the machine, none is pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
