package main

type deleteCmd struct {
	target `embed:""`
	Yes    bool `help:"Confirm the deletion."`
}

func (d *deleteCmd) Run(e *env) error {
	if err := d.validate(); err != nil {
		return err
	}
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	if !d.Yes {
		return usagef("delete needs --yes: the next call with the key runs its side effect again, and a pending owner loses its claim")
	}
	ctx, c, done, err := e.connect(k)
	if err != nil {
		return err
	}
	defer done()
	deleted, err := c.admin.Delete(ctx, d.Scope, d.Key)
	if err != nil {
		return err
	}
	text := "deleted; the next call with the key is a new intent"
	if !deleted {
		text = "nothing to delete: no live record (never claimed, expired or deleted)"
	}
	return e.emit(struct {
		Scope   string `json:"scope"`
		Key     string `json:"key"`
		Deleted bool   `json:"deleted"`
	}{d.Scope, d.Key, deleted}, text)
}
