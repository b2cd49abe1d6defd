"""The Panel dashboards: one `pn.viewable.Viewer` class per page, served by ``apps/*.py``."""
