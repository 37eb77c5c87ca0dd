greeting = "from-file"
count    = 4
