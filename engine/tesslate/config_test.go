package tesslate

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// The reference platform's own cases for its config parser, rewritten as a table.
func TestParseConfig(t *testing.T) {
	tests := []struct {
		name  string
		json  string
		check func(t *testing.T, c Config)
	}{
		{
			name: "old file without connections",
			json: `{"apps": {"web": {"directory": "frontend", "port": 5173, "start": "npm run dev"}},
				"infrastructure": {"db": {"image": "postgres:16", "port": 5432}},
				"primaryApp": "web"}`,
			check: func(t *testing.T, c Config) {
				if len(c.Connections) != 0 {
					t.Errorf("connections = %v, want none", c.Connections)
				}
				if c.PrimaryApp != "web" || c.Apps["web"].Directory != "frontend" || c.Apps["web"].AppPort() != 5173 {
					t.Errorf("apps = %+v, primary %q", c.Apps, c.PrimaryApp)
				}
				if c.Infrastructure["db"].Type != "" || c.Infrastructure["db"].ServicePort() != 5432 {
					t.Errorf("db = %+v", c.Infrastructure["db"])
				}
			},
		},
		{
			name: "exports kept as written until resolved",
			json: `{"apps": {"api": {"port": 8000, "exports": {"API_URL": "http://${HOST}:${PORT}"}}},
				"infrastructure": {"db": {"image": "postgres:16", "env": {"POSTGRES_DB": "app"},
					"exports": {"DATABASE_URL": "postgres://${HOST}:${PORT}/${POSTGRES_DB}"}}}}`,
			check: func(t *testing.T, c Config) {
				if got := c.Apps["api"].Exports["API_URL"]; got != "http://${HOST}:${PORT}" {
					t.Errorf("app export = %q", got)
				}
				if got := c.Infrastructure["db"].Exports["DATABASE_URL"]; got != "postgres://${HOST}:${PORT}/${POSTGRES_DB}" {
					t.Errorf("infra export = %q", got)
				}
				if got := c.Infrastructure["db"].Env["POSTGRES_DB"]; got != "app" {
					t.Errorf("infra env kept: %q", got)
				}
			},
		},
		{
			name: "external keeps provider and endpoint",
			json: `{"apps": {"web": {}}, "infrastructure": {"auth": {"type": "external", "provider": "supabase",
				"endpoint": "https://x.supabase.co", "exports": {"SUPABASE_URL": "https://x.supabase.co"}}}}`,
			check: func(t *testing.T, c Config) {
				a := c.Infrastructure["auth"]
				if a.Type != TypeExternal || a.Provider != "supabase" || a.Endpoint != "https://x.supabase.co" {
					t.Errorf("auth = %+v", a)
				}
			},
		},
		{
			name: "start on infrastructure (sailtui's extension)",
			json: `{"infrastructure": {"kv": {"image": "busybox", "port": 6379, "start": "exec httpd -f -p 6379"},
				"db": {"image": "postgres:16"}}}`,
			check: func(t *testing.T, c Config) {
				if got := c.Infrastructure["kv"].Start; got != "exec httpd -f -p 6379" {
					t.Errorf("kv start = %q", got)
				}
				if got := c.Infrastructure["db"].Start; got != "" {
					t.Errorf("db without start = %q, want none (its image's own command)", got)
				}
			},
		},
		{
			name: "empty lists",
			json: `{"apps": {"web": {"port": null}}, "infrastructure": {}, "connections": []}`,
			check: func(t *testing.T, c Config) {
				if c.Connections == nil || len(c.Connections) != 0 {
					t.Errorf("connections = %#v, want an empty list", c.Connections)
				}
				if c.Apps["web"].AppPort() != DefaultAppPort {
					t.Errorf("null port = %d, want the default", c.Apps["web"].AppPort())
				}
			},
		},
		{
			name: "unknown keys ignored, BOM tolerated",
			json: "\ufeff" + `{"apps": {"web": {"x": 10, "framework": "nextjs"}}, "deployments": {}, "previews": [1]}`,
			check: func(t *testing.T, c Config) {
				if c.Apps["web"].Framework != "nextjs" {
					t.Errorf("web = %+v", c.Apps["web"])
				}
			},
		},
		{
			name: "defaults by image",
			json: `{"infrastructure": {"cache": {"image": "docker.io/library/redis:7"}, "db": {"image": "mongo@sha256:abc"},
				"files": {"image": "minio/minio", "data": "/srv/data/"}}}`,
			check: func(t *testing.T, c Config) {
				if n := c.Infrastructure["cache"]; n.ServicePort() != 6379 || n.DataPath() != "/data" {
					t.Errorf("redis: port %d data %s", n.ServicePort(), n.DataPath())
				}
				if n := c.Infrastructure["db"]; n.ServicePort() != 27017 || n.DataPath() != "/data/db" {
					t.Errorf("mongo: port %d data %s", n.ServicePort(), n.DataPath())
				}
				if n := c.Infrastructure["files"]; n.ServicePort() != DefaultInfraPort || n.DataPath() != "/srv/data" {
					t.Errorf("unknown: port %d data %s", n.ServicePort(), n.DataPath())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestParseConfigRefuses(t *testing.T) {
	tests := []struct {
		name, json string
		key        string
		want       string
	}{
		{"invalid JSON", "{\n  \"apps\": {\n    \"web\": {,}\n}", "", "line 3, column"},
		{"empty file", "", "", "file is empty"},
		{"wrong shape", `{"apps": ["web"]}`, "apps", "where an object belongs"},
		{"two values", `{"apps": {"web": {}}} {}`, "", "more than one JSON value"},
		{"nothing to run", `{"primaryApp": ""}`, "apps", "no apps and no infrastructure"},
		{"unknown type", `{"infrastructure": {"q": {"type": "queue", "image": "x"}}}`, "infrastructure.q.type", `write "container"`},
		{"service without image", `{"infrastructure": {"db": {"port": 5432}}}`, "infrastructure.db.image", "needs an image"},
		{"relative data", `{"infrastructure": {"db": {"image": "x", "data": "data"}}}`, "infrastructure.db.data", "not an absolute path"},
		{"connection to a missing node", `{"apps": {"web": {}}, "connections": [{"from": "web", "to": "db"}]}`, "connections[0].to", `no app or infrastructure node is named "db" (there are: web)`},
		{"connection without from", `{"apps": {"web": {}}, "connections": [{"to": "web"}]}`, "connections[0].from", "missing"},
		{"connection to itself", `{"apps": {"web": {}}, "connections": [{"from": "web", "to": "web"}]}`, "connections[0]", "connects to itself"},
		{"from an external", `{"apps": {"web": {}}, "infrastructure": {"x": {"type": "external"}}, "connections": [{"from": "x", "to": "web"}]}`, "connections[0].from", "is external"},
		{"start on an external", `{"apps": {"web": {}}, "infrastructure": {"x": {"type": "external", "start": "run"}}}`, "infrastructure.x.start", "takes no command"},
		{"duplicate in apps", `{"apps": {"web": {}, "web": {"port": 1}}}`, "apps.web", "given twice"},
		{"duplicate across sections", `{"apps": {"db": {}}, "infrastructure": {"db": {"image": "postgres"}}}`, "infrastructure.db", "also used in apps"},
		{"port out of range", `{"apps": {"web": {"port": 70000}}}`, "apps.web.port", "out of range"},
		{"primary not an app", `{"apps": {"web": {}}, "infrastructure": {"db": {"image": "p"}}, "primaryApp": "db"}`, "primaryApp", `no app is named "db"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.json))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if ce.Key != tt.key || !strings.Contains(ce.Msg, tt.want) {
				t.Fatalf("got key %q msg %q; want key %q and %q", ce.Key, ce.Msg, tt.key, tt.want)
			}
			if !strings.HasPrefix(err.Error(), ConfigPath+": ") {
				t.Errorf("message %q does not name the file", err)
			}
		})
	}
}

// The platform's export resolver cases.
func TestResolveExports(t *testing.T) {
	tests := []struct {
		name       string
		exports    map[string]string
		env        map[string]string
		want       map[string]string
		unresolved []string
	}{
		{"no exports yield nothing", nil, nil, nil, nil},
		{"host, port and env keys",
			map[string]string{"DATABASE_URL": "postgres://postgres:${POSTGRES_PASSWORD}@${HOST}:${PORT}/${POSTGRES_DB}"},
			map[string]string{"POSTGRES_PASSWORD": "dev", "POSTGRES_DB": "app"},
			map[string]string{"DATABASE_URL": "postgres://postgres:dev@db:5432/app"}, nil},
		{"unknown variable stays as written",
			map[string]string{"A": "${UNKNOWN}-${HOST}", "B": "${UNKNOWN}${ALSO}", "C": "$HOST and ${} stay"},
			nil,
			map[string]string{"A": "${UNKNOWN}-db", "B": "${UNKNOWN}${ALSO}", "C": "$HOST and ${} stay"},
			[]string{"ALSO", "UNKNOWN"}},
		{"literal value", map[string]string{"SUPABASE_URL": "https://x.supabase.co"}, nil,
			map[string]string{"SUPABASE_URL": "https://x.supabase.co"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, unresolved := ResolveExports(tt.exports, "db", 5432, tt.env)
			if !maps.Equal(got, tt.want) {
				t.Errorf("resolved = %v, want %v", got, tt.want)
			}
			if !slices.Equal(unresolved, tt.unresolved) {
				t.Errorf("unresolved = %v, want %v", unresolved, tt.unresolved)
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"apps": {"web": {"port": 3000, "exports": {"U": "${HOST}"}}}, "connections": [{"from": "web", "to": "web"}]}`))
	f.Add([]byte(`{"infrastructure": {"db": {"image": "postgres:16"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			return
		}
		for _, cn := range c.Connections {
			if !c.HasNode(cn.From) || !c.HasNode(cn.To) {
				t.Fatalf("accepted a connection to a missing node: %+v", cn)
			}
		}
	})
}
