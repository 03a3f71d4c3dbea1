"""specrun's first-party plugins, written exactly as a third party's would be."""
