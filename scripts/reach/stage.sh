# Sourced by verify.sh and verify-here.sh: stages the package as its tarball installs it.
#   stage_package APP_DIR CACHE_DIR
# Packs this checkout (npm pack --ignore-scripts: dist/ and prebuilds/ as they are, no script runs),
# unpacks the tarball into APP_DIR/node_modules/reapkit with node-gyp-build (its one dependency)
# beside it, and puts the reach fixture in APP_DIR. Prints the tarball's name.
stage_package() {
  local app=$1 cache=$2 packs tarball
  packs=$cache/packs
  rm -rf "$packs"
  mkdir -p "$packs"
  tarball=$(npm pack --ignore-scripts --silent --pack-destination "$packs" | tail -n 1)
  rm -rf "$app"
  mkdir -p "$app/node_modules/reapkit"
  tar -xzf "$packs/$tarball" -C "$app/node_modules/reapkit" --strip-components=1
  cp -r node_modules/node-gyp-build "$app/node_modules/"
  cp test/reach/fixtures/native.cjs "$app/"
  # A package of its own: without it, from inside this checkout, require('reapkit') would resolve
  # to the checkout itself (Node's self-reference by package name) rather than to the tarball's copy.
  echo '{"private":true}' >"$app/package.json"
  echo "$tarball"
}

# The prerequisites every reach run has: dist/ and the prebuild folder of ARCH.
require_built() {
  local arch=$1 f
  [ -f dist/cjs/index.js ] || { echo "reach: no dist/ here: run npm run build:ts first" >&2; return 1; }
  for f in reapkit.node reapkit.musl.node reapkit-exec reapkit-supervise; do
    [ -f "prebuilds/linux-$arch/$f" ] || { echo "reach: no prebuilds/linux-$arch/$f: run npm run prebuild first" >&2; return 1; }
  done
}
