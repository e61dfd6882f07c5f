package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// ErrNoService: the supervisor answers that there is no auth service (the
// box has no web surface): nobody can answer, the agent's own prompt
// takes over at once.
var ErrNoService = errors.New("no auth service to ask")

// Wait sends r to the supervisor's approval socket, which relays it to the
// auth service, and waits for the answer until ctx ends. A connection
// that fails or breaks (the supervisor or the service restarts) is tried
// again every retryEvery with the same request, which the service knows
// again by its ID; a refusal (4xx) is final, 404 being ErrNoService.
func Wait(ctx context.Context, socket string, r Request, retryEvery time.Duration) (Answer, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return Answer{}, err
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for {
		a, final, err := ask(ctx, client, body)
		if err == nil || final {
			return a, err
		}
		select {
		case <-ctx.Done():
			return Answer{}, fmt.Errorf("no answer before the hook's time ran out (last: %w)", err)
		case <-time.After(retryEvery):
		}
	}
}

// ask is one POST: its answer, or an error and whether it is final.
func ask(ctx context.Context, client *http.Client, body []byte) (Answer, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://agent-box-auth"+contract.Approvals.Path, bytes.NewReader(body))
	if err != nil {
		return Answer{}, true, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Answer{}, false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case err != nil:
		return Answer{}, false, err
	case resp.StatusCode == http.StatusNotFound:
		return Answer{}, true, ErrNoService
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return Answer{}, true, fmt.Errorf("the auth service refused the request: %s: %s", resp.Status, bytes.TrimSpace(data))
	case resp.StatusCode != http.StatusOK:
		return Answer{}, false, fmt.Errorf("the auth service answered %s", resp.Status)
	}
	var a Answer
	if err := json.Unmarshal(data, &a); err != nil {
		return Answer{}, true, fmt.Errorf("the auth service's answer is not JSON: %w", err)
	}
	if err := a.Check(); err != nil {
		return Answer{}, true, fmt.Errorf("the auth service's answer: %w", err)
	}
	return a, true, nil
}
