// Command scripted-model serves the scripted model (package scriptedmodel)
// for the VM tier and for measurements on a host.
//
// Usage:
//
//	scripted-model -listen 127.0.0.1:8099 -log /var/log/scripted-model.jsonl
//
// Each request is appended to the log as one JSON line and synced, so a
// scenario reads it while the server runs.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/agent-box/agent-box/internal/scriptedmodel"
)

type syncWriter struct{ f *os.File }

func (w syncWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err == nil {
		err = w.f.Sync()
	}
	return n, err
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8099", "address to listen on")
	logPath := flag.String("log", "", "file the requests are appended to (JSON lines)")
	flag.Parse()
	srv := &scriptedmodel.Server{}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "scripted-model:", err)
			os.Exit(1)
		}
		srv.Log = syncWriter{f}
	}
	if err := http.ListenAndServe(*listen, srv); err != nil {
		fmt.Fprintln(os.Stderr, "scripted-model:", err)
		os.Exit(1)
	}
}
