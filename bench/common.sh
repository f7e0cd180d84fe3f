# Helpers the bench scripts source.

# field EXPR: EXPR (python, over the parsed object d) of the JSON on stdin, e.g. `pd-infer ... --json |
# field 'd["latency_ms"]["p50"]'`. The input is read to its end before python starts: a python started
# on the other end of the pipe ran beside the timed pd-infer and took one of two cores from it (LeNet
# int8 at batch 64 read 0.48 instead of 0.23 ms on a 16-core host pinned to 2, 0.85 instead of 0.45 here).
field() {
  local json
  json=$(cat)
  python3 -c "import json,sys; d=json.load(sys.stdin); print($1)" <<< "$json"
}

# median V...: the median, to four significant digits.
median() { python3 -c "import statistics,sys; print('%.4g' % statistics.median(float(v) for v in sys.argv[1:]))" "$@"; }
