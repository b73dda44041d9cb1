"""Lambda handlers: parse the event, call the core, format the answer."""
