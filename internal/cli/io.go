package cli

import "io"

// maxInput bounds what the CLI reads from a file or standard input.
const maxInput = 64 << 20

func readAll(r io.Reader) ([]byte, error) { return io.ReadAll(io.LimitReader(r, maxInput)) }
