package web

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/actions"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// appLogLines is how many of an app's last journal lines the settings
// page shows.
const appLogLines = 12

// appRow is one of the user's apps on the settings page.
type appRow struct {
	Name, Active, Uptime, Status, Log string
	Restarts                          int
	Stopped                           bool
}

// appRows reads the user's apps (with systemctl and journalctl, as the
// CLI does). A user without apps has no systemctl in its environment:
// that is no error, just no section.
func (s *Server) appRows(ctx context.Context) ([]appRow, string) {
	if s.cfg.Apps == nil {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	states, err := s.cfg.Apps.List(ctx)
	if errors.Is(err, exec.ErrNotFound) {
		return nil, ""
	}
	if err != nil {
		return nil, err.Error()
	}
	var rows []appRow
	for _, st := range states {
		row := appRow{Name: st.Name, Active: st.Active, Status: escape.String(st.Status), Restarts: st.Restarts,
			Stopped: !strings.HasPrefix(st.Active, "active") && !strings.HasPrefix(st.Active, "activating")}
		if !row.Stopped && !st.Since.IsZero() {
			row.Uptime = uptime(time.Since(st.Since))
		}
		if out, err := s.cfg.Apps.Logs(ctx, st.Name, appLogLines); err == nil {
			row.Log = escape.String(strings.TrimRight(string(out), "\n"))
		} else {
			row.Log = "(the log cannot be read: " + escape.String(err.Error()) + ")"
		}
		rows = append(rows, row)
	}
	return rows, ""
}

// appsPost is POST /settings/apps: start, stop or restart one of the
// user's apps (polkit allows exactly these, for exactly its own apps).
func (s *Server) appsPost(w http.ResponseWriter, r *http.Request) {
	if !s.form(w, r) {
		return
	}
	name, verb := r.PostForm.Get("name"), r.PostForm.Get("action")
	var err error
	switch {
	case s.cfg.Apps == nil:
		err = &actions.InputError{Msg: "this user has no apps"}
	case verb != "start" && verb != "stop" && verb != "restart":
		err = &actions.InputError{Msg: "unknown action " + escape.Quote(verb, 32)}
	default:
		err = s.cfg.Apps.Do(r.Context(), verb, name)
	}
	s.answer(w, r, err, "app-"+verb, name)
}
