"""The pages' languages: the translator and its catalogs."""
