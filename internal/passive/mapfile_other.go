//go:build !unix

package passive

// mapFile: no mapping here; every worker reads the file.
func mapFile(string) ([]byte, func()) { return nil, nil }
