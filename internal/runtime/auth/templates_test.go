package auth

import "testing"

// TestThePagesTemplateParses: the pages' template is parsed at its first
// use (a process that serves no page does not pay for it), so one that
// does not parse must fail here rather than in a served request.
func TestThePagesTemplateParses(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("the pages' template: %v", r)
		}
	}()
	if pages().Lookup("inbox") == nil {
		t.Error("the pages' template has no inbox")
	}
}
