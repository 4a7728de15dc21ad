import ReelWriter
print("reel")
