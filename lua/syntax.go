package lua

func checkSyntax(src []byte, chunkname string) string { return "" }
