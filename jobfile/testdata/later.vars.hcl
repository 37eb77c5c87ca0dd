count = 5
