#!/usr/bin/env bash
# Drive `tile-explore FILE` under tmux as a new user would, at 80x24 and 160x48, and keep a
# capture of every screen (docs/walkthrough.md says what was tried and seen).
#
#   scripts/tmux_walkthrough.sh OUT_DIR FILE [FILE ...]
#
# For each file and size: start the app, wait for the first screen (WAIT seconds, default 60;
# a script still running then is stopped with Ctrl-C, which keeps what it recorded), then
# press Enter (open the kernel), ] (next stage), / ld (search), c (copy), w + Enter (save into
# OUT_DIR), 3 h Enter (a pass diff), Escape, 4 5 6 7 (the other views), ctrl+k Escape (kernel
# switcher), ctrl+p Escape (palette), ? Escape (help) and q; each screen is captured as
# OUT_DIR/<file>-<size>-<step>.txt, and what the shell printed after the app as ...-exit.txt.
set -u
out=$1; shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
wait_s=${WAIT:-60}
for file in "$@"; do
  base=$(basename "$file" .py)
  for size in 80x24 160x48; do
    session="walk-$$-$base-$size"
    # run from OUT_DIR (saves land there), with this shell's PATH and PYTHONPATH
    tmux new-session -d -s "$session" -x "${size%x*}" -y "${size#*x}" \
      "export PATH='$PATH' PYTHONPATH='${PYTHONPATH:-}'; cd '$out' && \
       tile-explore '$(realpath "$file")'; echo EXIT=\$?; sleep 30"
    cap() { tmux capture-pane -p -t "$session" > "$out/$base-$size-$1.txt"; }
    # wait for the app's footer (or give up waiting and interrupt the script)
    for _ in $(seq "$wait_s"); do
      tmux capture-pane -p -t "$session" | grep -q "palette" && break
      sleep 1
    done
    if ! tmux capture-pane -p -t "$session" | grep -q "palette"; then
      cap running; tmux send-keys -t "$session" C-c; sleep 5
    fi
    keys() { tmux send-keys -t "$session" "$@"; sleep 1.5; }
    cap 1-kernels
    keys Enter; cap 2-stages
    keys ']'; cap 2-next-stage
    keys / ; tmux send-keys -t "$session" -l ld; keys Enter; cap 2-search
    keys c; cap 2-copy
    keys w; keys Enter; cap 2-save
    keys 3; keys h; keys Enter; cap 3-diff
    keys Escape; keys 4; cap 4-layouts
    keys 5; cap 5-linked
    keys 6; cap 6-pipeline
    keys 7; cap 7-timings
    keys C-k; cap switcher; keys Escape
    keys C-p; cap palette; keys Escape
    keys '?'; cap help; keys Escape
    keys q; sleep 2; cap exit
    tmux kill-session -t "$session" 2>/dev/null
  done
done
