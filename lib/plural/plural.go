// Package plural writes counts with their noun in the right number: "1
// record", "2 records", "0 records". A leaf: it imports only fmt.
package plural

import "fmt"

// Count is n followed by one when n is 1, else by many.
func Count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, Word(n, one, many))
}

// Word is one when n is 1, else many.
func Word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
