"""Application records: the texts of embeddable records and their vectors, content writes,
demo data and the seeded fixtures."""
