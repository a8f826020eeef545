package tesslate

import (
	"strings"
	"unicode"
)

// portRules are tried in order against the whole framework text, so a rule earlier in the list
// wins over a later one wherever the words appear: "Next.js" with "React 19" is a Next.js app,
// and "Vite + React" with a "FastAPI" backend is served by Vite.
//
// The first three rules are the reference platform's, with its one bug fixed (it tested "react"
// before "next", so every Next.js app got 5173). The others are the conventional dev-server
// ports of common frameworks; they come last so they never change a result of the first three.
// "Node" alone is left out on purpose: it is a runtime with no port of its own, and inferring 3000
// from it would override a port the container was given.
var portRules = []struct {
	port  int
	words []string
}{
	{3000, []string{"next", "nextjs"}},
	{5173, []string{"vite", "vitejs", "react", "reactjs"}},
	{8000, []string{"fastapi", "uvicorn"}},

	{3000, []string{"nuxt", "nuxtjs"}},
	{5173, []string{"sveltekit", "svelte", "vue", "vuejs"}},
	{4321, []string{"astro"}},
	{4200, []string{"angular"}},
	{8000, []string{"django", "gunicorn", "laravel"}},
	{5000, []string{"flask"}},
	{3000, []string{"express", "expressjs", "nestjs", "rails"}},
	{8080, []string{"spring"}},
}

// InferredPort is the port the framework text implies, 0 when it implies none. The framework
// text is the values of the Framework Configuration fields; only when they imply nothing is the
// Tech Stack consulted. Words are matched whole ("Next.js" is next, "nextauth" is not), so
// prose elsewhere in the file (which mentions every framework under the sun) cannot change it.
func (s Spec) InferredPort() int {
	var fw []string
	for _, f := range s.Framework {
		fw = append(fw, f.Value)
	}
	if p := inferPort(fw); p > 0 {
		return p
	}
	return inferPort(s.TechStack)
}

func inferPort(texts []string) int {
	words := map[string]bool{}
	for _, t := range texts {
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			words[w] = true
		}
	}
	for _, rule := range portRules {
		for _, w := range rule.words {
			if words[w] {
				return rule.port
			}
		}
	}
	return 0
}
