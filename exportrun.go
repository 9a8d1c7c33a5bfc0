package sessiondb

import "context"

// ExportEach is the loop of ExportAll over ids, listed beforehand (so no
// read stays open while the caller writes each session out): each id is
// exported in turn with export and handed to yield. A session deleted since
// the listing (export reports not_found) is passed over; the end of ctx
// stops the loop with busy; any other error of export, and any error of
// yield, stops it and is returned as it is.
func ExportEach(ctx context.Context, ids []string, export func(context.Context, string) (map[string]any, error), yield func(map[string]any) error) error {
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return Wrap(CarriedCode(err), err, "export sessions")
		}
		rec, err := export(ctx, id)
		if ErrorCode(err) == ENOTFOUND {
			continue // deleted since the listing
		}
		if err != nil {
			return err
		}
		if err := yield(rec); err != nil {
			return err
		}
	}
	return nil
}
