package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// ttyd's page is compiled into its binary as one gzip stream (ttyd's
// html.h); its scripts are inline. The web daemon reads that page from the
// binary itself, never from what a socket answers, and lets only those
// scripts run on the terminal route: whatever listens on ttyd's socket, a
// page it serves runs no script of its own (docs/web-contract.md).
const (
	maxTTYDBinary = 64 << 20 // what is read of the binary
	maxTTYDPage   = 16 << 20 // what a gzip stream in it may inflate to
)

var scriptRE = regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`)

// TTYDPageHashes returns the CSP hash source ('sha256-…') of each inline
// script of the page compiled into the ttyd binary at path.
func TTYDPageHashes(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bin, err := io.ReadAll(io.LimitReader(f, maxTTYDBinary))
	if err != nil {
		return nil, err
	}
	page, err := embeddedPage(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var hashes []string
	for _, m := range scriptRE.FindAllSubmatch(page, -1) {
		if bytes.Contains(bytes.ToLower(m[1]), []byte("src")) {
			return nil, fmt.Errorf("%s: its page loads a script from elsewhere (%q)", path, m[1])
		}
		sum := sha256.Sum256(m[2])
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	if len(hashes) == 0 {
		return nil, fmt.Errorf("%s: its page has no inline script", path)
	}
	return hashes, nil
}

// embeddedPage is the first gzip stream in bin that inflates to an HTML
// document.
func embeddedPage(bin []byte) ([]byte, error) {
	for i := 0; ; i++ {
		j := bytes.Index(bin[i:], []byte{0x1f, 0x8b, 0x08})
		if j < 0 {
			return nil, errors.New("no HTML page compiled in (no gzip stream inflates to one)")
		}
		i += j
		zr, err := gzip.NewReader(bytes.NewReader(bin[i:]))
		if err != nil {
			continue
		}
		zr.Multistream(false)
		page, err := io.ReadAll(io.LimitReader(zr, maxTTYDPage))
		if err != nil {
			continue
		}
		head := strings.ToLower(string(page[:min(len(page), 256)]))
		if strings.HasPrefix(strings.TrimSpace(head), "<!doctype html") || strings.Contains(head, "<html") {
			return page, nil
		}
	}
}

// termCSP is the Content-Security-Policy of every answer on /term/...:
// ttyd's own scripts (and WebAssembly, which its image decoder compiles),
// its inline styles, its WebSocket and token fetch to this origin, nothing
// else. Without hashes no script runs at all.
func termCSP(host string, hashes []string) string {
	scripts := "'none'"
	if len(hashes) > 0 {
		scripts = strings.Join(hashes, " ") + " 'wasm-unsafe-eval'"
	}
	return "default-src 'none'; script-src " + scripts +
		"; style-src 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:" +
		"; connect-src 'self' wss://" + host +
		"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}
