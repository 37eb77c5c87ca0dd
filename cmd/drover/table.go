package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// printList prints n rows under a tab-separated header as an aligned
// table, or the empty message when there are none.
func printList(w io.Writer, empty, header string, n int, row func(i int) string) {
	if n == 0 {
		fmt.Fprintln(w, empty)
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	for i := 0; i < n; i++ {
		fmt.Fprintln(tw, row(i))
	}
	tw.Flush()
}

// printNamespacedList is printList with a leading Namespace column when
// the rows span more than one namespace (as with -namespace '*').
func printNamespacedList(w io.Writer, empty, header string, n int, namespace func(i int) string, row func(i int) string) {
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		seen[namespace(i)] = true
	}
	if len(seen) <= 1 {
		printList(w, empty, header, n, row)
		return
	}
	id, rest, _ := strings.Cut(header, "\t")
	printList(w, empty, id+"\tNamespace\t"+rest, n, func(i int) string {
		id, rest, _ := strings.Cut(row(i), "\t")
		return id + "\t" + namespace(i) + "\t" + rest
	})
}

// kv is a "Key = value" block, aligned as Nomad's formatKV.
type kv struct {
	rows [][2]string
}

// add appends a row; value is formatted with fmt.Sprint.
func (k *kv) add(key string, value any) *kv {
	k.rows = append(k.rows, [2]string{key, fmt.Sprint(value)})
	return k
}

// write prints the block on w.
func (k *kv) write(w io.Writer) {
	tw := newTable(w)
	for _, r := range k.rows {
		fmt.Fprintf(tw, "%s\t= %s\n", r[0], r[1])
	}
	tw.Flush()
}
