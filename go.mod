module github.com/agent-box/agent-box

go 1.25

require (
	github.com/google/go-cmp v0.7.0
	github.com/pkg/diff v0.0.0-20210226163009-20ebb0f2a09e
	golang.org/x/tools v0.42.0
)
