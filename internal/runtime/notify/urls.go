package notify

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// configWhat names the URLs in a *badconfig.Error (exit 12).
const configWhat = "notify URL"

// LoadURLs reads every login's URL from credDir (its credentials: the
// file NotifyPrefix + login, one line, an http or https URL with a host,
// at most urlMaxBytes): login -> URL. Plain http ones are also listed in
// insecure (their token travels in the clear). A bad file is a
// *badconfig.Error naming it, never its contents.
func LoadURLs(credDir string) (urls map[string]string, insecure []string, err error) {
	if credDir == "" {
		return nil, nil, &badconfig.Error{What: configWhat, Err: errors.New("CREDENTIALS_DIRECTORY is unset (LoadCredential=" + contract.Creds.NotifyPrefix + "<login>:<urlFile>)")}
	}
	ents, err := os.ReadDir(credDir)
	if err != nil {
		return nil, nil, &badconfig.Error{What: configWhat, Path: credDir, Err: err}
	}
	urls = map[string]string{}
	for _, e := range ents {
		login, ok := strings.CutPrefix(e.Name(), contract.Creds.NotifyPrefix)
		if !ok {
			continue
		}
		path := filepath.Join(credDir, e.Name())
		if !contract.Names.Login.Match(login) {
			return nil, nil, badconfig.Errorf(configWhat, path, "%q is not a login name", login)
		}
		u, err := readURL(path)
		if err != nil {
			return nil, nil, &badconfig.Error{What: configWhat, Path: path, Err: err}
		}
		urls[login] = u
		if strings.HasPrefix(u, "http:") {
			insecure = append(insecure, login)
		}
	}
	sort.Strings(insecure)
	return urls, insecure, nil
}

// readURL reads one URL file; errors never quote it (it holds a token).
func readURL(path string) (string, error) {
	max := contract.Attention.Notify.URLMaxBytes
	data, err := userfile.Read(path, int64(max)+1) // the newline
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(string(data), "\n")
	switch {
	case len(s) > max:
		return "", fmt.Errorf("more than %d bytes", max)
	case s == "":
		return "", errors.New("empty: want one line, an http or https URL")
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", errors.New("a space, a control character or more than one line: want one line, an http or https URL")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return "", errors.New("not an http or https URL with a host")
	}
	return s, nil
}
