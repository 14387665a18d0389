# buildlib.sh holds what the Python runtime's build scripts share (build.sh,
# the interpreter and its standard library; bundle.sh, the bundled
# packages). They source it; it runs nothing by itself.

# parse_args sets force from the scripts' one option, --force (rebuild
# even when dist/ or the cache already match the key).
parse_args() {
	local arg
	force=0
	for arg in "$@"; do
		case $arg in
		--force) force=1 ;;
		*)
			echo "usage: $0 [--force]" >&2
			exit 2
			;;
		esac
	done
}

# apt_state DIR TYPE [SUITE] sets up a private apt state in DIR whose
# entries, of TYPE (deb-src for source packages, deb for binary packages),
# copy the URIs, suites, components and keyring of the machine's own apt
# sources, so no archive host is named in this repository and apt verifies
# every file against the signed index. With SUITE, the state has that one
# suite of the machine's main archive instead (the entries whose suites
# include a release's own, such as "bookworm" beside "bookworm-updates"):
# another Debian release's packages, signed by the same archive keyring.
# It updates the lists (keeping the last ones when the update fails and
# there are some) and sets apt_opts, the options that make apt-get and
# apt-cache use this state.
apt_state() {
	local dir=$1 type=$2 suite=${3:-}
	mkdir -p "$dir/lists/partial" "$dir/parts" "$dir/cache/archives/partial"
	# The state is private: whatever else is in its parts is a leftover.
	rm -f "$dir/parts/"*.sources
	python3.11 - "$dir/parts/capsule-$type.sources" "$type" "$suite" <<'PY'
import glob, re, sys

out, kind, only_suite = sys.argv[1], sys.argv[2], sys.argv[3]
stanzas = []


def suites_for(suites):
    """The suites of an entry: its own, or only_suite for the main archive's
    entries (None for the others)."""
    if not only_suite:
        return suites
    return only_suite if any("-" not in s for s in suites.split()) else None

def field(block, name):
    m = re.search(r"^%s:[ \t]*(.*(?:\n[ \t]+.*)*)" % re.escape(name), block, re.M | re.I)
    return m.group(1) if m else None

for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    with open(path) as f:
        text = "\n".join(l for l in f.read().splitlines() if not l.lstrip().startswith("#"))
    for block in re.split(r"\n\s*\n", text):
        types = (field(block, "Types") or "").split()
        if "deb" not in types or (field(block, "Enabled") or "yes").strip().lower() == "no":
            continue
        uris, suites = field(block, "URIs"), field(block, "Suites")
        if not uris or not suites:
            continue
        suites = suites_for(suites.strip())
        if suites is None:
            continue
        st = ["Types: " + kind, "URIs: " + uris.strip(), "Suites: " + suites]
        comps = field(block, "Components")
        if comps:
            st.append("Components: " + comps.strip())
        signed = field(block, "Signed-By")
        if signed:
            st.append("Signed-By: " + signed.strip("\n"))
        stanzas.append("\n".join(st))

lists = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list"))
for path in lists:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        line = line.split("#", 1)[0].strip()
        m = re.match(r"deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
        if not m:
            continue
        opts, uri, suite, comps = m.groups()
        suite = suites_for(suite)
        if suite is None:
            continue
        st = ["Types: " + kind, "URIs: " + uri, "Suites: " + suite]
        if comps.strip():
            st.append("Components: " + comps.strip())
        for opt in (opts or "").split():
            k, _, v = opt.partition("=")
            if k.lower() == "signed-by":
                st.append("Signed-By: " + v)
        stanzas.append("\n".join(st))

if not stanzas:
    sys.exit("no deb entries found in the machine's apt sources")
with open(out, "w") as f:
    f.write("\n\n".join(stanzas) + "\n")
PY
	apt_opts=(-o "Dir::State::Lists=$dir/lists" -o "Dir::Etc::SourceParts=$dir/parts"
		-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Cache=$dir/cache"
		-o "Dir::State::status=/dev/null" -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
	if ! apt-get "${apt_opts[@]}" -qq update >"$dir/update.log" 2>&1; then
		local index=Packages
		[[ $type == deb-src ]] && index=Sources
		if compgen -G "$dir/lists/*$index*" >/dev/null; then
			echo "$(basename "$0"): apt update failed, using the lists from the last run:" >&2
			tail -n 3 "$dir/update.log" >&2
		else
			cat "$dir/update.log" >&2
			exit 1
		fi
	fi
}

# newest_first prints the versions given as arguments, newest first by
# Debian's own ordering.
newest_first() {
	local versions=("$@") i j tmp
	for ((i = 0; i < ${#versions[@]}; i++)); do
		for ((j = i + 1; j < ${#versions[@]}; j++)); do
			if dpkg --compare-versions "${versions[j]}" gt "${versions[i]}"; then
				tmp=${versions[i]}
				versions[i]=${versions[j]}
				versions[j]=$tmp
			fi
		done
	done
	((${#versions[@]} == 0)) || printf '%s\n' "${versions[@]}"
}

# zip_tree DIR ZIP STORE writes the files under DIR into ZIP, reproducibly
# (fixed dates, sorted names, fixed modes). STORE says which entries are
# stored rather than compressed: "all", "none", or a file name suffix
# (.pyc: the runtime serves stored entries straight from the embedded
# bytes, and inflates compressed ones on first open).
zip_tree() {
	/usr/bin/python3.11 - "$@" <<'PY'
import os, sys, zipfile
root, out, store = sys.argv[1], sys.argv[2], sys.argv[3]
def stored(name):
    if store in ("all", "none"):
        return store == "all"
    return name.endswith(store)
names = []
for d, dirs, files in os.walk(root):
    for f in files:
        names.append(os.path.relpath(os.path.join(d, f), root))
with zipfile.ZipFile(out, "w") as z:
    for name in sorted(names):
        info = zipfile.ZipInfo(name.replace(os.sep, "/"), (2000, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED if stored(name) else zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        with open(os.path.join(root, name), "rb") as f:
            z.writestr(info, f.read())
PY
}

# The cached outputs. Both scripts set dist (where the binary embeds
# them from), key (the recipe and inputs they were made from), cache_root,
# out (the cache directory of that key) and outputs (the file and
# directory names).

# install_dist copies the outputs from $out into $dist and records $key.
install_dist() {
	local f
	mkdir -p "$dist"
	for f in "${outputs[@]}"; do
		rm -rf "$dist/$f.tmp"
		cp -a "$out/$f" "$dist/$f.tmp"
		rm -rf "$dist/$f"
		mv "$dist/$f.tmp" "$dist/$f"
	done
	echo "$key" >"$dist/KEY"
}

# new_work starts a build in $work ($cache_root/work, emptied), which is
# removed at the script's exit unless CAPSULE_BUILD_KEEP=1; on failure the
# script's own background builds are stopped first. phase reports progress
# from here on.
new_work() {
	start=$SECONDS
	work=$cache_root/work
	rm -rf "$work"
	mkdir -p "$work"
	if [[ ${CAPSULE_BUILD_KEEP:-0} != 1 ]]; then
		trap 'jobs -p | xargs -r kill 2>/dev/null; rm -rf "$work"' EXIT
	else
		trap 'jobs -p | xargs -r kill 2>/dev/null' EXIT
	fi
}

phase() { echo "$(basename "$0"): [$((SECONDS - start)) s] $*"; }

# keep_outputs STAGE PREFIX makes the outputs built in STAGE the cache's
# for $key (in $out, under $cache_root), installs them in $dist, and keeps
# only the three most recent builds whose keys start with PREFIX: older
# keys are dead recipes.
keep_outputs() {
	echo "$key" >"$1/KEY"
	rm -rf "$out.tmp"
	mv "$1" "$out.tmp"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	install_dist
	ls -1dt "$cache_root/$2"* 2>/dev/null | tail -n +4 | xargs -r rm -rf
}

# dist_from_cache ends the script when $dist already holds $key's outputs,
# or after copying them from the cache; it returns when they must be built.
dist_from_cache() {
	local f name me
	name=$(basename "$(dirname "$dist")")/$(basename "$dist")
	me=$(basename "$0")
	if [[ -f $dist/KEY && $(<"$dist/KEY") == "$key" ]]; then
		local complete=1
		for f in "${outputs[@]}"; do
			[[ -e $dist/$f ]] || complete=0
		done
		if ((complete)); then
			echo "$me: $name is up to date ($key)"
			exit 0
		fi
	fi
	if [[ -f $out/KEY ]]; then
		install_dist
		echo "$me: $name copied from the cache ($out)"
		exit 0
	fi
}
