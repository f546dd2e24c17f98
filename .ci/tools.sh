#!/usr/bin/env bash
# Checks the tools `make test` needs besides Go (make test runs it first):
# when any is missing it names every one, with the test that needs it, and
# the one apt-get line that installs them all, instead of failing on the
# first and leaving the next to be found by another run.
set -uo pipefail

# Each entry: the commands (any one will do), the Debian packages, and why.
# .ci/run installs the same packages: keep the two lists in step.
tools=(
  "npm|nodejs npm|npm ci installs the test clients, the conformance suite and Node 22 (Node.js 20 or newer, https://nodejs.org)"
  "node|nodejs npm|the TypeScript SDK clients and the conformance suite run on it"
  "gcc cc|gcc|the race detector needs cgo"
  "haproxy|haproxy|TestClusterHAProxy runs the README's HAProxy configuration"
  "nginx /usr/sbin/nginx|nginx|TestNginx runs the README's nginx configuration"
  "python3|python3|TestExecEnvPythonUserSiteRefused runs a Python program"
  "curl|curl|TestExecEnvOpenSSLConfRefused runs a program linked with OpenSSL"
  "wine|wine wine64|TestWindows runs luamcp.exe under Wine"
  "systemd-socket-activate|systemd|the systemd tests run luamcp under it and check the unit files with systemd-analyze"
  "x86_64-w64-mingw32-gcc|gcc-mingw-w64-x86-64|TestWindows builds a DLL Wine 8 lacks"
)

missing=()
packages=()
for entry in "${tools[@]}"; do
  IFS='|' read -r commands pkgs why <<<"$entry"
  found=
  for c in $commands; do
    if command -v "$c" >/dev/null || [ -x "$c" ]; then
      found=1
      break
    fi
  done
  if [ -z "$found" ]; then
    missing+=("  ${commands%% *}: $why")
    for p in $pkgs; do
      case " ${packages[*]} " in *" $p "*) ;; *) packages+=("$p") ;; esac
    done
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "make: ${#missing[@]} tool(s) the tests need are missing:" >&2
  printf '%s\n' "${missing[@]}" >&2
  echo "Install them with: apt-get install -y ${packages[*]}" >&2
  echo "(or run .ci/run, which installs them and then runs make test)" >&2
  exit 1
fi
