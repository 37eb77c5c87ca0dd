package httpapi

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-bexpr"
)

// Pagination and filtering, as Nomad's list endpoints:
//
//   - ?per_page=N returns at most N items; when more follow, the response
//     carries X-Nomad-NextToken, the token of the first item of the next
//     page.
//   - ?next_token=T starts the page at the first item whose token is not
//     before T in the listing's order (a token of an item gone since still
//     works: the page starts where it would have been).
//   - ?reverse=true lists in the opposite order.
//   - ?filter=EXPR keeps the items matching a go-bexpr expression,
//     evaluated (as Nomad does) on the full object behind each item, with
//     Nomad's field names: `Status == "running"`, `Attributes["kernel.name"]
//     == "linux"`, `Meta.team is not empty`. Items filtered out do not
//     count towards the page. A filter that does not parse, or that names
//     a field the objects do not have, is a 400.
//
// Tokens follow Nomad's: "<namespace>.<id>" for jobs, "<create index>.<id>"
// for allocations, evaluations and deployments (the ID alone when listed
// by ?prefix=), the node ID for nodes, the name for namespaces.

// pageOptions are a list request's pagination and filter parameters.
type pageOptions struct {
	perPage   int
	nextToken string
	reverse   bool
	filter    *bexpr.Evaluator
}

// maxPerPage bounds ?per_page (Nomad takes any int32; drover bounds the
// page so one answer stays well inside Lambda's response limit).
const maxPerPage = 10000

// parsePageOptions reads per_page, next_token, reverse and filter.
func parsePageOptions(r *http.Request) (*pageOptions, error) {
	q := r.URL.Query()
	o := &pageOptions{nextToken: q.Get("next_token")}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, badRequestf("query parameter \"per_page\": %q is not a page size (a whole number, 0 for no limit)", v)
		}
		if n > maxPerPage {
			return nil, badRequestf("query parameter \"per_page\": %d is more than drover's limit of %d", n, maxPerPage)
		}
		o.perPage = n
	}
	rev, err := boolParam(r, "reverse")
	if err != nil {
		return nil, err
	}
	o.reverse = rev
	if f := q.Get("filter"); f != "" {
		ev, err := bexpr.CreateEvaluator(f)
		if err != nil {
			return nil, badRequestf("query parameter \"filter\": failed to read filter expression: %v", err)
		}
		o.filter = ev
	}
	return o, nil
}

// pageKey is an item's position in a listing: by Index then ID when
// byIndex, else by ID alone (ID may be "<namespace>.<id>"). An index key
// without an ID (job versions) renders as the bare number.
type pageKey struct {
	byIndex bool
	index   uint64
	id      string
}

// token renders the key as Nomad renders it in X-Nomad-NextToken.
func (k pageKey) token() string {
	if k.byIndex && k.id == "" {
		return strconv.FormatUint(k.index, 10)
	}
	if k.byIndex {
		return strconv.FormatUint(k.index, 10) + "." + k.id
	}
	return k.id
}

// compare orders k against a token, as Nomad's tokenizers: an index token
// compares its index as a number, then the ID; a token that does not parse
// as one compares as a string.
func (k pageKey) compare(token string) int {
	if !k.byIndex {
		return cmp.Compare(k.id, token)
	}
	idx, id, ok := strings.Cut(token, ".")
	n, err := strconv.ParseUint(idx, 10, 64)
	if !ok && k.id == "" && err == nil {
		return cmp.Compare(k.index, n) // a bare number: job versions
	}
	if !ok || err != nil {
		return cmp.Compare(k.token(), token)
	}
	if c := cmp.Compare(k.index, n); c != 0 {
		return c
	}
	return cmp.Compare(k.id, id)
}

// listPage is a handler's answer that is one page of a listing: query
// writes X-Nomad-NextToken from next and the items as the body.
type listPage struct {
	items any
	next  string
}

// paginate sorts items by key (ascending, or descending when desc: the
// listing's own order), reverses that order with ?reverse=true, starts at
// ?next_token, keeps what ?filter matches and cuts at ?per_page. It
// returns the page and the next page's token ("" when this page is the
// last).
func paginate[T any](items []T, o *pageOptions, key func(T) pageKey, desc bool) ([]T, string, error) {
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b T) int {
		ka, kb := key(a), key(b)
		c := cmp.Compare(ka.index, kb.index)
		if !ka.byIndex || c == 0 {
			c = cmp.Compare(ka.id, kb.id)
		}
		if desc {
			return -c
		}
		return c
	})
	if o.reverse {
		slices.Reverse(out)
		desc = !desc
	}
	page := make([]T, 0, min(len(out), max(o.perPage, 16)))
	for _, it := range out {
		k := key(it)
		if o.nextToken != "" {
			c := k.compare(o.nextToken)
			if (!desc && c < 0) || (desc && c > 0) {
				continue // before the page's start
			}
		}
		if o.filter != nil {
			ok, err := o.filter.Evaluate(it)
			if err != nil {
				return nil, "", badRequestf("query parameter \"filter\": %v", err)
			}
			if !ok {
				continue
			}
		}
		if o.perPage > 0 && len(page) == o.perPage {
			return page, k.token(), nil
		}
		page = append(page, it)
	}
	return page, "", nil
}

// Keys of the listings.

func jobKey(ns, id string) pageKey { return pageKey{id: ns + "." + id} }

func idKey(id string) pageKey { return pageKey{id: id} }

func indexKey(index uint64, id string) pageKey { return pageKey{byIndex: true, index: index, id: id} }
