#!/bin/sh
# export.sh: writes the patches back from the prepared tree's commits.
#
# prepare.sh makes runtimes/wazero/prepared-by-make a git repository with one
# commit for the filtered release and then one commit per patch, whose
# message is the patch file's name. To change a patch, commit the change in
# that tree (amend the patch's commit, or `git rebase -i` for an earlier
# one); to add one, commit it with the new file name (NNNN-short-name.patch)
# as its message and put its upstream note in patches/NNNN-short-name.note.
# Then run this: each patch file becomes its note (the text before the diff
# in today's file, or the .note file for a new one, which is then removed)
# followed by the commit's diff. make then prepares the tree again from the
# new patches, which proves they apply in order.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/prepared-by-make
git_out() { git -C "$out" -c core.hooksPath=/dev/null "$@"; }

if [ -n "$(git_out status --porcelain)" ]; then
	git_out status --short >&2
	echo "export.sh: commit the change in $out first (one commit per patch)" >&2
	exit 1
fi
base=$(git_out rev-list --max-parents=0 HEAD)
for c in $(git_out rev-list --reverse "$base..HEAD"); do
	name=$(git_out log -1 --format=%s "$c")
	case $name in
	[0-9][0-9][0-9][0-9]-*.patch) ;;
	*) echo "export.sh: commit $c is named '$name', not NNNN-short-name.patch" >&2; exit 1 ;;
	esac
	file=$here/patches/$name
	if [ -f "$file" ]; then
		note=$(awk '/^diff --git /{exit} {print}' "$file")
	elif [ -f "${file%.patch}.note" ]; then
		note=$(cat "${file%.patch}.note")
	else
		echo "export.sh: $name is new: write its upstream note in patches/${name%.patch}.note" >&2
		exit 1
	fi
	{
		printf '%s\n' "$note"
		git_out diff --no-color --no-ext-diff "$c~1" "$c"
	} >"$file.tmp"
	mv "$file.tmp" "$file"
	rm -f "${file%.patch}.note"
	echo "export.sh: wrote patches/$name"
done
