package web

import "testing"

// TestEveryPageTemplateParses: the pages' templates are parsed at their
// first use (a process that serves no page, such as exec-session in every
// pane, does not pay for them), so a template that does not parse must
// fail here rather than in a served request.
func TestEveryPageTemplateParses(t *testing.T) {
	for name, page := range map[string]func() any{
		"list": func() any { return listPage() }, "settings": func() any { return settingsPage() },
		"confirm": func() any { return confirmPage() }, "upload": func() any { return uploadPage() },
		"downloads": func() any { return downloadsPage() },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("the %s page's template: %v", name, r)
				}
			}()
			page()
		})
	}
}
