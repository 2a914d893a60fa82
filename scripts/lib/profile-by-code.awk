# scripts/bench-stream --profile's table: CPU ns per datagram delivered, by side, thread and code.
#   awk -f profile-by-code.awk LINES -
# LINES: StreamBench's output, whose "run side=S ... delivered=D ... start_ns=A end_ns=B" lines give
# each measured run's window on CLOCK_MONOTONIC; standard input: `perf script --ns -F
# comm,pid,tid,time,period,ip,dso` of a record made with -k CLOCK_MONOTONIC, one sample a line
# (COMM PID/TID TIME: PERIOD IP (DSO), the comm possibly with spaces; a cpu-clock sample's period is
# the CPU nanoseconds it stands for). A sample is kept if it falls in a window of its side.
#
# Times are compared as numbers: "TIME:" with its colon cut off is a string to awk, and a string
# compared with a number is compared as text against the number printed to six digits, which
# moved each window's ends by up to 0.1 s, the length of a run (ProfileByCodeTest).
function code(dso) {
  if (dso ~ /^\[JIT\]|perf-[0-9]+\.map/) return "own: JIT code"
  if (dso ~ /libjvm\.so/) return "own: the JVM"
  if (dso ~ /libjniNativeVerbs\.so/) return "own: JNI stub"
  if (dso ~ /stream_reference/) return "own: the C program"
  if (dso ~ /libibverbs\.so|libefa\.so/) return "the EFA double"
  if (dso ~ /libc\.so|ld-linux|\[vdso\]/) return "libc and vDSO"
  if (dso ~ /kernel/) return "kernel"
  return "other libraries"
}
function kv(k,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } return "" }
FNR == NR {
  if ($1 == "run") { s = kv("side"); w[s, ++nw[s]] = kv("start_ns") / 1e9; e[s, nw[s]] = kv("end_ns") / 1e9
    delivered[s] += kv("delivered") }
  next
}
{
  dso = $NF; gsub(/[()]/, "", dso); period = $(NF - 2); time = $(NF - 3) + 0
  split($(NF - 4), id, "/")
  comm = $1; for (i = 2; i <= NF - 5; i++) comm = comm " " $i
  if (comm == "stream_referenc") { side = "c"; thread = id[1] == id[2] ? "sender" : "receiver" }
  else { side = "efa-ah"; thread = comm == "java" ? "sender" : comm == "stream-receiver" ? "receiver" : "JVM, other threads" }
  inside = 0
  for (i = 1; i <= nw[side] && !inside; i++) inside = time >= w[side, i] && time <= e[side, i]
  if (!inside) next
  c = code(dso)
  ns[side, thread, c] += period; rows[thread SUBSEP c] = 1
  if (c ~ /^own/ && thread != "JVM, other threads") own[side] += period
  all[side] += period; samples[side]++
}
END {
  cd = delivered["c"]; ed = delivered["efa-ah"]
  if (cd == 0 || ed == 0) { print "bench-stream: no measured run in the lines" > "/dev/stderr"; exit 1 }
  print "| thread | code | C | efa-ah |"
  print "|---|---|---|---|"
  n = split("sender receiver", threads, " ")
  m = split("own: the C program|own: JIT code|own: the JVM|own: JNI stub|the EFA double|libc and vDSO|kernel|other libraries", codes, "|")
  for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if ((threads[i] SUBSEP codes[j]) in rows)
    printf "| %s | %s | %.1f | %.1f |\n", threads[i], codes[j], ns["c", threads[i], codes[j]] / cd, ns["efa-ah", threads[i], codes[j]] / ed
  for (j = 1; j <= m; j++) if (("JVM, other threads" SUBSEP codes[j]) in rows)
    printf "| JVM, other threads | %s | - | %.1f |\n", codes[j], ns["efa-ah", "JVM, other threads", codes[j]] / ed
  printf "| sender and receiver | own code | %.1f | %.1f |\n", own["c"] / cd, own["efa-ah"] / ed
  printf "| every thread | all | %.1f | %.1f |\n", all["c"] / cd, all["efa-ah"] / ed
  printf "\n%d and %d samples; %d and %d datagrams delivered\n", samples["c"], samples["efa-ah"], cd, ed
}
