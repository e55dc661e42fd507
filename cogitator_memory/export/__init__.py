"""Export of a user's memory (the right of access): ``services.export_user`` streams one
JSON document of everything memory keeps of a user; ``access`` says who may ask for it."""
