package uitest

func (s *site) addMailboxes() {}
