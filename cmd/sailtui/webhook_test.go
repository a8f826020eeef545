package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sailtui/sailtui/backends/webhook"
	"github.com/sailtui/sailtui/engine"
)

// The platform hears of it (issue 35, item 2): with SAILTUI_WEBHOOK_URL set, the sweep's idle
// warning and the hibernation that follows reach the receiver as signed JSON, from the sweep's
// own process; a receiver that is down fails nothing and is reported.
func TestWebhookGetsTheWarningAndTheHibernation(t *testing.T) {
	const secret = "platform-shared-secret"
	var (
		mu  sync.Mutex
		got []webhook.Payload
		bad []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if !webhook.Verify(secret, body, r.Header.Get(webhook.HeaderSignature)) {
			bad = append(bad, string(body))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p webhook.Payload
		if err := json.Unmarshal(body, &p); err != nil {
			bad = append(bad, string(body))
		}
		got = append(got, p)
	}))
	defer srv.Close()

	c := newCLI(t)
	c.ok("project", "create", "hooked")
	hook := []string{"SAILTUI_WEBHOOK_URL=" + srv.URL + "/sailtui", "SAILTUI_WEBHOOK_SECRET=" + secret}
	sweep := func(warnMinutes string) {
		t.Helper()
		out := c.runIn(nil, append([]string{"SAILTUI_IDLE_WARNING_MINUTES=" + warnMinutes}, hook...), "--headless", "--sweep=hibernate", "--idle", "1ns")
		if out.code != 0 {
			t.Fatalf("sweep: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
		}
	}
	sweep("5")
	sweep("0") // the warning turned off: the warned project is hibernated at once

	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("deliveries whose signature did not check: %q", bad)
	}
	var types []string
	for _, p := range got {
		if p.Slug != "hooked" {
			t.Errorf("a delivery for %q", p.Slug)
		}
		types = append(types, p.Type+":"+p.To)
	}
	// The hibernation passes through hibernating to hibernated: each status change is sent.
	want := "idle_warning: status:hibernating status:hibernated"
	if strings.Join(types, " ") != want {
		t.Fatalf("deliveries %q; want %q", strings.Join(types, " "), want)
	}
	if got[0].Reason == "" || got[0].Time.IsZero() || got[0].ProjectID == "" {
		t.Errorf("warning %+v: want its reason, time and project id", got[0])
	}
}

func TestWebhookReceiverDownFailsNothing(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now

	c := newCLI(t)
	c.ok("project", "create", "unheard")
	out := c.runIn(nil, []string{"SAILTUI_WEBHOOK_URL=" + url, "SAILTUI_WEBHOOK_SECRET=k", "SAILTUI_IDLE_WARNING_MINUTES=0"},
		"--headless", "--sweep=hibernate", "--idle", "1ns")
	var rep engine.SweepReport
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &rep) != nil || len(rep.Hibernated) != 1 {
		t.Fatalf("sweep with the receiver down: exit %d %+v\n%s\n%s", out.code, rep, out.stdout, out.stderr)
	}
	if !strings.Contains(out.stderr, "not delivered") {
		t.Fatalf("stderr does not say the events were not delivered:\n%s", out.stderr)
	}
}

func TestWebhookSettingsRefused(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"SAILTUI_WEBHOOK_URL=https://platform.example/hook"}, "SAILTUI_WEBHOOK_SECRET is empty"},
		{[]string{"SAILTUI_WEBHOOK_URL=platform.example", "SAILTUI_WEBHOOK_SECRET=k"}, "want an http or https URL"},
	} {
		out := c.runIn(nil, tc.env, "projects", "ls")
		if out.code != 2 || !strings.Contains(out.stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s; want 2 and %q", tc.env, out.code, out.stderr, tc.want)
		}
	}
	out := c.runIn(nil, []string{"SAILTUI_WEBHOOK_URL=https://platform.example/hook", "SAILTUI_WEBHOOK_SECRET=hunter2"}, "config")
	if out.code != 0 || strings.Contains(out.stdout, "hunter2") || !strings.Contains(out.stdout, "(set)") {
		t.Errorf("config shows the secret or not that it is set: exit %d\n%s", out.code, out.stdout)
	}
}
