// Command check-caddy-config checks Caddy's adapted configuration against the web contract, for the flake's golden check.
//
// It reads Caddy's adapted JSON configuration
// (`caddy adapt --config FILE --adapter caddyfile`) on stdin and checks it
// against the web surface's contract (internal/caddycheck): exit 0 when it
// holds, 1 with one line per problem when not, 2 for usage errors. The
// flake's golden check runs it on the Caddyfile NixOS installs.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-box/agent-box/internal/caddycheck"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check-caddy-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	domain := fs.String("domain", "", "the web domain (host[:port])")
	users := fs.String("users", "", "comma-separated agent users with an origin")
	hookUsers := fs.String("hooks", "", "comma-separated agent users with webhooks")
	appsDomain := fs.String("apps-domain", "", "the apps' domain (host[:port]; default: the web domain)")
	appList := fs.String("apps", "", "comma-separated apps as USER:APP, or USER:APP:public for a public one")
	usage := func() int {
		fmt.Fprintln(stderr, "usage: check-caddy-config -domain HOST[:PORT] -users A,B [-hooks A] [-apps-domain HOST[:PORT]] [-apps U:A[:public],...] < adapted.json")
		return 2
	}
	if err := fs.Parse(args); err != nil || *domain == "" || fs.NArg() != 0 {
		return usage()
	}
	var apps []caddycheck.App
	if *appList != "" {
		for _, s := range strings.Split(*appList, ",") {
			f := strings.Split(s, ":")
			if len(f) < 2 || len(f) > 3 || f[0] == "" || f[1] == "" || len(f) == 3 && f[2] != "public" {
				fmt.Fprintf(stderr, "check-caddy-config: -apps: %q is not USER:APP or USER:APP:public\n", s)
				return usage()
			}
			apps = append(apps, caddycheck.App{User: f[0], Name: f[1], Public: len(f) == 3})
		}
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "check-caddy-config: reading stdin: %v\n", err)
		return 2
	}
	var us []string
	if *users != "" {
		us = strings.Split(*users, ",")
	}
	var hs []string
	if *hookUsers != "" {
		hs = strings.Split(*hookUsers, ",")
	}
	probs := caddycheck.Check(data, caddycheck.Want{Domain: *domain, Users: us, Hooks: hs, AppsDomain: *appsDomain, Apps: apps})
	for _, p := range probs {
		fmt.Fprintf(stderr, "check-caddy-config: %s\n", p)
	}
	if len(probs) > 0 {
		return 1
	}
	fmt.Fprintln(stdout, "check-caddy-config: the configuration holds the web contract")
	return 0
}
