package tesslate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ConfigPath is where a project keeps its .tesslate/config.json, relative to its root. The
// reference platform made it the source of truth for how a project's containers start; a
// project without one is read from its TESSLATE.md files as before.
const ConfigPath = ".tesslate/config.json"

// MaxConfigSize bounds config.json for the same reason as MaxSize bounds TESSLATE.md.
const MaxConfigSize = 1 << 20

// Infrastructure types.
const (
	TypeContainer = "container"
	TypeExternal  = "external"
)

// Config is a project's .tesslate/config.json as sailtui uses it. Keys the orchestrator has no
// use for (deployments, previews, node positions) are ignored, as the platform's parser does.
type Config struct {
	Apps           map[string]App   `json:"apps"`
	Infrastructure map[string]Infra `json:"infrastructure"`
	Connections    []Connection     `json:"connections"`
	PrimaryApp     string           `json:"primaryApp"`
}

// App is a dev container: the project's own code run by a command.
type App struct {
	Directory string            `json:"directory"`
	Port      *int              `json:"port"`
	Start     string            `json:"start"`
	Build     string            `json:"build"`
	Output    string            `json:"output"`
	Framework string            `json:"framework"`
	Image     string            `json:"image"`
	Resources Resources         `json:"resources"`
	Env       map[string]string `json:"env"`
	Exports   map[string]string `json:"exports"`
}

// Infra is an infrastructure node: a service container of its own image (a database), or an
// external service that is only a set of exports.
type Infra struct {
	Type      string            `json:"type"`
	Image     string            `json:"image"`
	Port      *int              `json:"port"`
	Env       map[string]string `json:"env"`
	Exports   map[string]string `json:"exports"`
	Provider  string            `json:"provider"`
	Endpoint  string            `json:"endpoint"`
	Resources Resources         `json:"resources"`
	// Data is where the service's persistent volume is mounted (sailtui's own key; a default
	// by image otherwise, see DataPath).
	Data string `json:"data"`
	// Start is the service's command, run as one sh script as an app's start is (sailtui's
	// own key, which the platform ignores): without it the image's own command runs, and an
	// image that has none (no ENTRYPOINT or CMD) could not be a service at all.
	Start string `json:"start"`
}

// Resources are Kubernetes requests and limits, as quantities ("512Mi", "100m").
type Resources struct {
	MemoryRequest string `json:"memory_request,omitempty"`
	MemoryLimit   string `json:"memory_limit,omitempty"`
	CPURequest    string `json:"cpu_request,omitempty"`
	CPULimit      string `json:"cpu_limit,omitempty"`
}

// Connection {From, To} gives From the resolved exports of To, and starts To first.
type Connection struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ConfigError is a config.json sailtui refuses: Key names the place ("apps.web.port",
// "connections[1].to"; "" for the file as a whole).
type ConfigError struct {
	Key string
	Msg string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return ConfigPath + ": " + e.Msg
	}
	return fmt.Sprintf("%s: %s: %s", ConfigPath, e.Key, e.Msg)
}

func cfgErr(key, format string, args ...any) *ConfigError {
	return &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// DefaultAppPort and DefaultInfraPort are the platform's defaults for a node without a port.
const (
	DefaultAppPort   = DefaultPort
	DefaultInfraPort = 5432
)

// ParseConfig reads a config.json and checks what the orchestrator relies on: valid JSON of the
// right shape, no name used twice, known infrastructure types, an image for every service
// container, ports in range, connections and primaryApp naming nodes that exist. Errors are
// *ConfigError and say what to write instead.
func ParseConfig(data []byte) (Config, error) {
	if len(data) > MaxConfigSize {
		return Config{}, cfgErr("", "file is %d bytes, over the %d-byte (1 MiB) limit", len(data), MaxConfigSize)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return Config{}, jsonError(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, cfgErr("", "more than one JSON value: the file must hold one object")
	}
	if err := checkDuplicateNames(data); err != nil {
		return Config{}, err
	}
	if err := c.check(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// jsonError turns encoding/json's errors into a message with a line and column a human can find.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return cfgErr("", "invalid JSON at line %d, column %d: %s", line, col, syn.Error())
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		key := typ.Field
		if key == "" {
			key = "(top level)"
		}
		return cfgErr(key, "line %d, column %d: a JSON %s where %s belongs", line, col, typ.Value, jsonKind(typ.Type.String()))
	case errors.Is(err, io.EOF):
		return cfgErr("", "the file is empty; write a JSON object, e.g. {\"apps\": {\"web\": {\"port\": 3000}}}")
	}
	return cfgErr("", "invalid JSON: %v", err)
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "tesslate."):
		return "an object"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "*int"):
		return "a number"
	}
	return goType
}

func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// checkDuplicateNames refuses a name given twice in apps or infrastructure, or in both:
// encoding/json would keep the last one silently, and a container would vanish.
func checkDuplicateNames(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil // reported by the decoder already
	}
	seen := map[string]string{}
	for _, section := range []string{"apps", "infrastructure"} {
		raw, ok := top[section]
		if !ok {
			continue
		}
		keys, err := objectKeys(raw)
		if err != nil {
			continue
		}
		for _, k := range keys {
			if prev, dup := seen[k]; dup {
				if prev == section {
					return cfgErr(section+"."+k, "the name is given twice in %s; give each node a name of its own", section)
				}
				return cfgErr(section+"."+k, "the name is also used in %s; apps and infrastructure share one namespace (the names are host names on the project network), rename one", prev)
			}
			seen[k] = section
		}
	}
	return nil
}

// objectKeys lists the keys of a JSON object in order, duplicates included.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func (c *Config) check() error {
	if len(c.Apps) == 0 && len(c.Infrastructure) == 0 {
		return cfgErr("apps", "no apps and no infrastructure: name at least one app, e.g. \"apps\": {\"web\": {\"start\": \"npm run dev\", \"port\": 3000}}")
	}
	for _, name := range sortedNames(c.Apps) {
		a := c.Apps[name]
		key := "apps." + name
		if err := checkPort(key, a.Port); err != nil {
			return err
		}
	}
	for _, name := range sortedNames(c.Infrastructure) {
		n := c.Infrastructure[name]
		key := "infrastructure." + name
		switch n.Type {
		case "", TypeContainer:
			if strings.TrimSpace(n.Image) == "" {
				return cfgErr(key+".image", "a service container needs an image, e.g. \"image\": \"postgres:16\" (or \"type\": \"external\" for a service that runs elsewhere)")
			}
			if n.Data != "" && !path.IsAbs(n.Data) {
				return cfgErr(key+".data", "%q is not an absolute path in the container; write e.g. \"/var/lib/postgresql/data\"", n.Data)
			}
		case TypeExternal:
			if n.Start != "" {
				return cfgErr(key+".start", "an external service runs elsewhere and nothing of it runs here, so it takes no command; remove \"start\", or make it a service container (\"type\": \"container\" with an \"image\")")
			}
		default:
			return cfgErr(key+".type", "unknown type %q; write \"container\" (the default: a container of its own image) or \"external\" (a service that runs elsewhere, only its exports)", n.Type)
		}
		if err := checkPort(key, n.Port); err != nil {
			return err
		}
	}
	for i, cn := range c.Connections {
		key := fmt.Sprintf("connections[%d]", i)
		for _, end := range []struct{ what, name string }{{"from", cn.From}, {"to", cn.To}} {
			if end.name == "" {
				return cfgErr(key+"."+end.what, "missing; a connection is {\"from\": \"web\", \"to\": \"db\"}")
			}
			if !c.HasNode(end.name) {
				return cfgErr(key+"."+end.what, "no app or infrastructure node is named %q (there are: %s)", end.name, strings.Join(c.NodeNames(), ", "))
			}
		}
		if cn.From == cn.To {
			return cfgErr(key, "%q connects to itself; a connection joins two nodes", cn.From)
		}
		if n, ok := c.Infrastructure[cn.From]; ok && n.Type == TypeExternal {
			return cfgErr(key+".from", "%q is external: it runs elsewhere and no environment of it can be set; connect from an app or a service container", cn.From)
		}
	}
	if c.PrimaryApp != "" {
		if _, ok := c.Apps[c.PrimaryApp]; !ok {
			return cfgErr("primaryApp", "no app is named %q (apps: %s)", c.PrimaryApp, strings.Join(sortedNames(c.Apps), ", "))
		}
	}
	return nil
}

func checkPort(key string, p *int) error {
	if p != nil && !validPort(*p) {
		return cfgErr(key+".port", "%d is out of range; write a port from 1 to 65535 (or leave it out for the default)", *p)
	}
	return nil
}

// HasNode reports whether name is an app or an infrastructure node.
func (c Config) HasNode(name string) bool {
	_, a := c.Apps[name]
	_, i := c.Infrastructure[name]
	return a || i
}

// NodeNames lists every app and infrastructure name, sorted.
func (c Config) NodeNames() []string {
	names := append(sortedNames(c.Apps), sortedNames(c.Infrastructure)...)
	sort.Strings(names)
	return names
}

// AppPort is an app's port: its own, else DefaultAppPort.
func (a App) AppPort() int {
	if a.Port != nil {
		return *a.Port
	}
	return DefaultAppPort
}

// ServicePort is an infrastructure node's port: its own, else the usual port of its image,
// else the platform's DefaultInfraPort.
func (n Infra) ServicePort() int {
	if n.Port != nil {
		return *n.Port
	}
	if p, ok := knownImages[imageBase(n.Image)]; ok {
		return p.port
	}
	return DefaultInfraPort
}

// DataPath is where a service container's volume is mounted: its "data", else where the usual
// image keeps its data, else /data.
func (n Infra) DataPath() string {
	if n.Data != "" {
		return path.Clean(n.Data)
	}
	return DataPathFor(n.Image)
}

// DataPathFor is where an image of a known kind keeps its data (/data when unknown).
func DataPathFor(image string) string {
	if p, ok := knownImages[imageBase(image)]; ok {
		return p.data
	}
	return "/data"
}

var knownImages = map[string]struct {
	port int
	data string
}{
	"postgres":   {5432, "/var/lib/postgresql/data"},
	"postgresql": {5432, "/var/lib/postgresql/data"},
	"mysql":      {3306, "/var/lib/mysql"},
	"mariadb":    {3306, "/var/lib/mysql"},
	"redis":      {6379, "/data"},
	"valkey":     {6379, "/data"},
	"mongo":      {27017, "/data/db"},
}

// imageBase is an image reference's last path component without tag or digest:
// "docker.io/library/postgres:16" → "postgres".
func imageBase(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	base := path.Base(ref)
	base, _, _ = strings.Cut(base, ":")
	return strings.ToLower(base)
}

func sortedNames[T any](m map[string]T) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

var exportVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ResolveExports resolves a node's exports against that node, as the platform does: ${HOST} is
// its host name, ${PORT} its port, ${NAME} any key of its own env. An unknown ${X} stays as
// written and is named in unresolved (sorted, once each) so the caller can warn.
func ResolveExports(exports map[string]string, host string, port int, env map[string]string) (resolved map[string]string, unresolved []string) {
	if len(exports) == 0 {
		return nil, nil
	}
	resolved = make(map[string]string, len(exports))
	for k, v := range exports {
		resolved[k] = exportVar.ReplaceAllStringFunc(v, func(m string) string {
			name := m[2 : len(m)-1]
			switch name {
			case "HOST":
				return host
			case "PORT":
				return strconv.Itoa(port)
			}
			if val, ok := env[name]; ok {
				return val
			}
			if !slices.Contains(unresolved, name) {
				unresolved = append(unresolved, name)
			}
			return m
		})
	}
	sort.Strings(unresolved)
	return resolved, unresolved
}
