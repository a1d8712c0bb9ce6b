"""What pages and JSON answers are built from: view helpers, filters, schemas, texts."""
