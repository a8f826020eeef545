package engine

import "regexp"

// installStep is what the reference platform does on a fresh clone before an app's command:
// when package.json is there without node_modules, the install of the package manager its
// lock file names (bun, pnpm, yarn, else npm). It is a shell step run in the container's
// directory, inside its environment, so it looks at the files where the command runs and
// needs no file read by the orchestrator (which a Kubernetes start must not depend on). The
// log says what it ran; a failed install fails the start with the installer's exit code.
const installStep = `if [ -f package.json ] && [ ! -d node_modules ]; then
  if [ -f bun.lock ] || [ -f bun.lockb ]; then sailtui_pm="bun install"
  elif [ -f pnpm-lock.yaml ]; then sailtui_pm="pnpm install"
  elif [ -f yarn.lock ]; then sailtui_pm="yarn install"
  else sailtui_pm="npm install"; fi
  echo "sailtui: package.json without node_modules: running $sailtui_pm (SAILTUI_INSTALL_DEPS=false turns this off)" >&2
  $sailtui_pm || exit $?
fi
`

// installsItself matches a command that installs dependencies already ("pnpm install
// --frozen-lockfile && ...", "npm ci", "bun i"): installing twice only costs time.
var installsItself = regexp.MustCompile(`(^|[^A-Za-z0-9_-])(npm|pnpm|yarn|bun)\s+(install|i|ci|add)([^A-Za-z0-9_-]|$)`)

// WithDependencyInstall is cmd preceded by the dependency step, unless cmd installs itself.
func WithDependencyInstall(cmd string) string {
	if installsItself.MatchString(cmd) {
		return cmd
	}
	return installStep + cmd
}
