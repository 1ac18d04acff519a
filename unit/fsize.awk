# Function sizes for `make lint`: a body runs from "{" in column 0 to "}" in
# column 0 (clang-format's layout of every function here). Prints
# "FILE:LINE NAME LINES" for each function over LIMIT lines (-v limit=N).
/^[a-zA-Z].*\(/ { sig = $0; sigline = FNR }
/^\{/ {
	start = FNR
	name = sig
	sub(/\(.*/, "", name)
	n = split(name, a, /[ *]+/)
	name = a[n]
}
/^\}/ {
	if (start && FNR - start - 1 > limit)
		printf "%s:%d %s %d\n", FILENAME, sigline, name, FNR - start - 1
	start = 0
}
