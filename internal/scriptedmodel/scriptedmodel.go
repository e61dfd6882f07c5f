// Package scriptedmodel is a stand-in for a model vendor's API, for tests (Anthropic Messages, OpenAI Responses).
//
// It is a stand-in for a model vendor's API, for tests:
// the Anthropic Messages API (POST /v1/messages, streamed as server-sent
// events or as one JSON document, and POST /v1/messages/count_tokens) and
// the OpenAI Responses API (POST /v1/responses), which real agent CLIs reach
// through their base-URL settings (Claude Code: ANTHROPIC_BASE_URL; Codex:
// a custom model provider).
//
// It plays a fixed script that the newest user message selects, so a
// scenario steers the model by what it types:
//
//   - a message whose text holds a line "run: COMMAND" is answered with one
//     tool call running COMMAND (the Bash tool; Codex's shell tool) when the
//     request offers tools (an agent's side request, such as Codex's title
//     of a conversation, offers none and gets text);
//   - a message that carries tool results is answered with the text
//     "tool done";
//   - anything else is answered with the text "reply N: " and the first line
//     of the message (N counts the requests answered so far);
//   - a message that holds a line "limit: K" (the first request that
//     carries that line under that first line, its task: Claude Code
//     2.1.328 resumed after a refused turn sends the refused prompt again,
//     joined with the new one, in one message) makes the account reach
//     its usage limit: that agent's
//     turn (a Messages request that offers tools) and the K-1 after it,
//     whatever they say, are refused with HTTP 429 as the API refuses a
//     subscription at its limit (rate_limit_error, with the unified
//     rate-limit headers: Claude Code 2.1.328 then asks once and ends the
//     turn with StopFailure, error rate_limit, measured), or, on the
//     Responses API, as OpenAI's refuses a plan at its limit
//     (usage_limit_reached: Codex 0.171.0 asks once and ends the turn
//     with usage_limit_exceeded in its rollout, measured).
//
// Every request is recorded (Record: its path, the authentication header's
// kind and the whole body), one JSON object per line, so that a test reads
// what the model saw.
package scriptedmodel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxBody is the largest request body the server reads.
const MaxBody = 32 << 20

// Record is one line of the request log.
type Record struct {
	N      int             `json:"n"`
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Auth   string          `json:"auth"` // "x-api-key", "bearer" or ""
	Body   json.RawMessage `json:"body,omitempty"`
	// Last is the text of the newest user message (its text blocks
	// joined by newlines, system reminders left out); Tool is the
	// command of the tool call answered, if any.
	Last  string `json:"last"`
	Reply string `json:"reply"`
	Tool  string `json:"tool,omitempty"`
	// Tools counts the tools the request offers: an agent's turn offers
	// some, its side requests none.
	Tools int `json:"tools"`
}

// Server answers and records requests. Log receives one JSON line per
// request; it is written under a lock.
type Server struct {
	mu  sync.Mutex
	n   int
	Log io.Writer
	// the usage limit: turns still to refuse, and the lines that set it
	limitLeft int
	limitSeen map[string]bool
}

// Remember takes up the usage limits an earlier server refused with (its
// log: the lines "limit: K" of its refused turns are spent), so that a
// model started again for the next spawn of an agent, as a test's network
// namespace per spawn does, does not refuse the same line again. Lines
// that are not records are skipped.
func (s *Server) Remember(log io.Reader) error {
	sc := bufio.NewScanner(log)
	sc.Buffer(nil, MaxBody+4096)
	s.mu.Lock()
	defer s.mu.Unlock()
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Reply != refusedReply {
			continue
		}
		for _, line := range strings.Split(r.Last, "\n") {
			if _, ok := strings.CutPrefix(strings.TrimSpace(line), "limit: "); ok {
				if s.limitSeen == nil {
					s.limitSeen = map[string]bool{}
				}
				s.limitSeen[limitKey(r.Last, line)] = true
			}
		}
	}
	return sc.Err()
}

// refusedReply is a refused turn's Reply in the log.
const refusedReply = "usage limit"

// limitReset is how far ahead a refusal says the limit resets.
const limitReset = time.Hour

// limited reports whether a turn whose newest user message is last is
// refused for the usage limit (s.mu held).
func (s *Server) limited(last string) bool {
	for _, line := range strings.Split(last, "\n") {
		k, ok := strings.CutPrefix(strings.TrimSpace(line), "limit: ")
		if n, err := strconv.Atoi(k); ok && err == nil && n > 0 && !s.limitSeen[limitKey(last, line)] {
			if s.limitSeen == nil {
				s.limitSeen = map[string]bool{}
			}
			s.limitSeen[limitKey(last, line)], s.limitLeft = true, n
		}
	}
	if s.limitLeft == 0 {
		return false
	}
	s.limitLeft--
	return true
}

// limitKey tells a limit line apart by the message's first line (its
// task), so that two agents' tasks with the same "limit: 1" each set it.
func limitKey(message, line string) string {
	first, _, _ := strings.Cut(message, "\n")
	return first + "\n" + line
}

// refuse answers as the Messages API does at an account's usage limit.
func refuse(w http.ResponseWriter, now time.Time) {
	reset := strconv.FormatInt(now.Add(limitReset).Unix(), 10)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", reset)
	h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
	h.Set("anthropic-ratelimit-unified-5h-reset", reset)
	h.Set("retry-after", strconv.Itoa(int(limitReset/time.Second)))
	w.WriteHeader(http.StatusTooManyRequests)
	io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}`)
}

type request struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []message         `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// LastUser returns the text of the newest user message and whether it
// carries tool results. Text blocks that are system reminders (they start
// with "<system-reminder>") are left out.
func LastUser(msgs []message) (text string, toolResult bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(msgs[i].Content, &s) == nil {
			return s, false
		}
		var blocks []block
		_ = json.Unmarshal(msgs[i].Content, &blocks)
		var parts []string
		for _, b := range blocks {
			switch {
			case b.Type == "tool_result":
				toolResult = true
			case b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>"):
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n"), toolResult
	}
	return "", false
}

// escalate starts a line like "run: " whose command Codex is asked to run
// outside its sandbox (the Responses API's call carries
// sandbox_permissions require_escalated), which makes a Codex with
// --ask-for-approval on-request ask for a person's approval; for the
// Messages API it is a "run: " line.
const escalate = "escalate: "

// escalated reports whether last asks for an escalated command.
func escalated(last string) bool {
	for _, line := range strings.Split(last, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), escalate) {
			return true
		}
	}
	return false
}

// answer picks the scripted reply: a text, or a shell command to call
// when the request offers tools.
func answer(n int, last string, toolResult, tools bool) (text, command string) {
	if toolResult {
		return "tool done", ""
	}
	for _, line := range strings.Split(last, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "run: "); ok && tools {
			return "", c
		}
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), escalate); ok && tools {
			return "", c
		}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(last), "\n")
	return fmt.Sprintf("reply %d: %s", n, first), ""
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	s.mu.Lock()
	s.n++
	rec := Record{N: s.n, Method: r.Method, Path: r.URL.Path, Auth: authKind(r)}
	if json.Valid(body) {
		rec.Body = body
	}
	s.mu.Unlock()
	status := http.StatusOK
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":12}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		var req request
		if err := json.Unmarshal(body, &req); err != nil {
			status = http.StatusBadRequest
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad JSON"}}`, status)
			break
		}
		last, tr := LastUser(req.Messages)
		rec.Last, rec.Tools = last, len(req.Tools)
		s.mu.Lock()
		refused := len(req.Tools) > 0 && s.limited(last)
		s.mu.Unlock()
		if refused {
			status, rec.Reply = http.StatusTooManyRequests, refusedReply
			refuse(w, time.Now())
			break
		}
		text, cmd := answer(rec.N, last, tr, len(req.Tools) > 0)
		rec.Last, rec.Reply, rec.Tool, rec.Tools = last, text, cmd, len(req.Tools)
		msg := reply(rec.N, req.Model, text, cmd)
		if req.Stream {
			stream(w, msg)
		} else {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(msg)
		}
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		status = s.responses(w, body, &rec)
	default:
		status = http.StatusNotFound
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Log != nil {
		line, _ := json.Marshal(rec)
		s.Log.Write(append(line, '\n'))
	}
}

func authKind(r *http.Request) string {
	switch {
	case r.Header.Get("X-Api-Key") != "":
		return "x-api-key"
	case strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "):
		return "bearer"
	}
	return ""
}

type content struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type messageDoc struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Role       string    `json:"role"`
	Model      string    `json:"model"`
	Content    []content `json:"content"`
	StopReason *string   `json:"stop_reason"`
	Usage      usage     `json:"usage"`
}

func reply(n int, model, text, cmd string) messageDoc {
	stop := "end_turn"
	var c content
	if cmd != "" {
		stop = "tool_use"
		input, _ := json.Marshal(map[string]string{"command": cmd, "description": "scripted command"})
		c = content{Type: "tool_use", ID: fmt.Sprintf("toolu_%04d", n), Name: "Bash", Input: input}
	} else {
		c = content{Type: "text", Text: &text}
	}
	return messageDoc{ID: fmt.Sprintf("msg_%04d", n), Type: "message", Role: "assistant", Model: model,
		Content: []content{c}, StopReason: &stop, Usage: usage{InputTokens: 12, OutputTokens: 5}}
}

// stream writes msg as the Messages API's event stream.
func stream(w http.ResponseWriter, msg messageDoc) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	event := func(name string, v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if f != nil {
			f.Flush()
		}
	}
	start := msg
	start.Content, start.StopReason = []content{}, nil
	event("message_start", map[string]any{"type": "message_start", "message": start})
	for i, c := range msg.Content {
		if c.Type == "text" {
			empty := ""
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": content{Type: "text", Text: &empty}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "text_delta", "text": *c.Text}})
		} else {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": content{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage(`{}`)}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "input_json_delta", "partial_json": string(c.Input)}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg.StopReason}, "usage": map[string]int{"output_tokens": msg.Usage.OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
